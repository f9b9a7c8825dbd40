/* Per-call overhead of kiln's C API next to ONNX Runtime's C API (bench/overhead).
 *
 * Runs one tiny model (bench/overhead/make_model.py: c = a + b over 16 float32) many
 * times and times every call on its own with clock_gettime(CLOCK_MONOTONIC); prints one
 * JSON line per measured API (median, p90 and mean = total / N in microseconds) and one
 * "meta" line. One process measures one runtime (bench/overhead/run.sh alternates them):
 *
 *   overhead_c --runtime kiln --model add16.onnx [--iters 100000] [--warmup 1000]
 *   overhead_c --runtime ort --ort-lib libonnxruntime.so.1 --model add16.onnx
 *   ... --only kiln_model_run_into   (one row only, e.g. under perf record)
 *
 * What each row does per call, as a real caller would:
 *   kiln kiln_model_run       wrap a and b as kiln_value (a struct on the stack, data
 *                             borrowed), run, read c from the new kiln_tensor, free it.
 *   kiln kiln_model_run_into  the same inputs; c written into the caller's buffer (a
 *                             kiln_value naming c with dtype and dims, set every call).
 *   ort  Run                  wrap a and b as OrtValues over the caller's memory
 *                             (CreateTensorWithDataAsOrtValue), run with ORT allocating
 *                             c, read c, release the three OrtValues.
 *   ort  Run (preallocated)   the same inputs; c is an OrtValue over the caller's buffer
 *                             made once before the loop (ORT writes into it).
 * Both runtimes use their defaults: kiln_model_load(path, NULL) (jit auto, threads 0 =
 * all cores, default device) and ORT's default session options (CPU provider, graph
 * optimisation level all, default intra-op threads) in a default environment.
 *
 * ONNX Runtime is loaded with dlopen: its C header is not installed here, so the few
 * entry points used are declared below by their documented positions in the OrtApi
 * function table (onnxruntime_c_api.h; the table only ever grows at its end, so these
 * positions hold for every API version). The API version requested is the minor number
 * of the library's version string (ORT_API_VERSION is the release's minor version:
 * 1.30.x -> 30); every function used here exists since version 1. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/kiln.h>

#define N_ELEMS 16

static const char *g_only; /* --only API: measure just that row */

static int wanted(const char *api) { return !g_only || !strcmp(g_only, api); }

/* ----------------------------------------------------------- timing and stats ---- */

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

typedef struct {
  double median_us, p90_us, mean_us, min_us;
} stats;

/* Sorts samples in place. p90: the nearest-rank 90th percentile. */
static stats summarise(int64_t *samples, long n, int64_t total_ns) {
  qsort(samples, (size_t)n, sizeof *samples, cmp_i64);
  stats s;
  s.median_us = (n % 2 ? (double)samples[n / 2] : 0.5 * ((double)samples[n / 2 - 1] + (double)samples[n / 2])) / 1e3;
  long k = (long)ceil(0.9 * (double)n) - 1;
  s.p90_us = (double)samples[k < 0 ? 0 : k] / 1e3;
  s.mean_us = (double)total_ns / (double)n / 1e3;
  s.min_us = (double)samples[0] / 1e3;
  return s;
}

/* One measured call; returns 0 on success (it prints its own error otherwise). */
typedef int (*step_fn)(void *ctx);

static int measure(step_fn step, void *ctx, long warmup, long iters, int64_t *samples, stats *out) {
  for (long i = 0; i < warmup; i++)
    if (step(ctx)) return 1;
  int64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    int64_t a = now_ns();
    if (step(ctx)) return 1;
    samples[i] = now_ns() - a;
  }
  *out = summarise(samples, iters, now_ns() - t0);
  return 0;
}

static void print_row(const char *runtime, const char *api, const stats *s, long iters, long warmup) {
  printf("{\"driver\": \"c\", \"runtime\": \"%s\", \"api\": \"%s\", \"median_us\": %.4f, \"p90_us\": %.4f, "
         "\"mean_us\": %.4f, \"min_us\": %.4f, \"iters\": %ld, \"warmup\": %ld}\n",
         runtime, api, s->median_us, s->p90_us, s->mean_us, s->min_us, iters, warmup);
  fflush(stdout);
}

/* What the clock costs per sample (two clock_gettime calls around nothing). */
static double timer_overhead_us(void) {
  enum { K = 100000 };
  static int64_t t[K];
  for (int i = 0; i < K; i++) {
    int64_t a = now_ns();
    t[i] = now_ns() - a;
  }
  stats s = summarise(t, K, 0);
  return s.median_us;
}

/* The inputs every call reads and what c must be. */
static float g_a[N_ELEMS], g_b[N_ELEMS];
static const int64_t g_dims[1] = {N_ELEMS};
static volatile float g_sink; /* keeps the read of each output */

static void fill_inputs(void) {
  for (int i = 0; i < N_ELEMS; i++) {
    g_a[i] = 0.5f * (float)i - 3.0f;
    g_b[i] = 1.25f * (float)(N_ELEMS - i);
  }
}

static int check_sum(const float *c, const char *what) {
  for (int i = 0; i < N_ELEMS; i++) {
    if (c[i] != g_a[i] + g_b[i]) {
      fprintf(stderr, "overhead_c: %s: c[%d] = %g, expected %g\n", what, i, (double)c[i], (double)(g_a[i] + g_b[i]));
      return 1;
    }
  }
  return 0;
}

/* ----------------------------------------------------------------------- kiln ---- */

typedef struct {
  kiln_model *model;
  float out[N_ELEMS];
} kiln_ctx;

static int kiln_fail(kiln_status s, const char *what) {
  fprintf(stderr, "overhead_c: kiln: %s: %s: %s\n", what, kiln_code_name(kiln_status_code(s)), kiln_status_message(s));
  kiln_status_free(s);
  return 1;
}

static void kiln_inputs(kiln_value in[2]) {
  static const char *const names[2] = {"a", "b"};
  float *data[2] = {g_a, g_b};
  for (int i = 0; i < 2; i++) {
    kiln_value v = KILN_VALUE_INIT;
    v.name = names[i];
    v.dtype = KILN_FLOAT32;
    v.rank = 1;
    v.dims = g_dims;
    v.data = data[i];
    v.byte_size = sizeof g_a;
    in[i] = v;
  }
}

static int kiln_step_run(void *p) {
  kiln_ctx *k = p;
  kiln_value in[2];
  kiln_inputs(in);
  kiln_tensor *out[1];
  kiln_status s = kiln_model_run(k->model, NULL, 2, in, 1, NULL, out);
  if (s) return kiln_fail(s, "kiln_model_run");
  const float *c = kiln_tensor_data(out[0]);
  g_sink = c[N_ELEMS - 1];
  kiln_tensor_free(out[0]);
  return 0;
}

static int kiln_step_run_into(void *p) {
  kiln_ctx *k = p;
  kiln_value in[2];
  kiln_inputs(in);
  kiln_value out = KILN_VALUE_INIT;
  out.name = "c";
  out.dtype = KILN_FLOAT32;
  out.rank = 1;
  out.dims = g_dims;
  out.data = k->out;
  out.byte_size = sizeof k->out;
  kiln_status s = kiln_model_run_into(k->model, NULL, 2, in, 1, &out);
  if (s) return kiln_fail(s, "kiln_model_run_into");
  g_sink = k->out[N_ELEMS - 1];
  return 0;
}

static int run_kiln(const char *model_path, long warmup, long iters, int64_t *samples) {
  kiln_ctx k = {0};
  kiln_status s = kiln_model_load(model_path, NULL, &k.model);
  if (s) return kiln_fail(s, "kiln_model_load");

  /* One checked call of each API before timing. */
  kiln_value in[2];
  kiln_inputs(in);
  kiln_tensor *out[1];
  if ((s = kiln_model_run(k.model, NULL, 2, in, 1, NULL, out))) return kiln_fail(s, "kiln_model_run");
  if (kiln_tensor_element_count(out[0]) != N_ELEMS || kiln_tensor_dtype(out[0]) != KILN_FLOAT32) {
    fprintf(stderr, "overhead_c: kiln: output is not 16 float32\n");
    return 1;
  }
  int bad = check_sum(kiln_tensor_data(out[0]), "kiln_model_run");
  kiln_tensor_free(out[0]);
  if (bad || kiln_step_run_into(&k) || check_sum(k.out, "kiln_model_run_into")) return 1;

  stats st;
  if (wanted("kiln_model_run")) {
    if (measure(kiln_step_run, &k, warmup, iters, samples, &st)) return 1;
    print_row("kiln", "kiln_model_run", &st, iters, warmup);
  }
  if (wanted("kiln_model_run_into")) {
    memset(k.out, 0, sizeof k.out);
    if (measure(kiln_step_run_into, &k, warmup, iters, samples, &st)) return 1;
    if (check_sum(k.out, "kiln_model_run_into (after timing)")) return 1;
    print_row("kiln", "kiln_model_run_into", &st, iters, warmup);
  }

  kiln_model_stats ms = KILN_MODEL_STATS_INIT;
  if ((s = kiln_model_get_stats(k.model, &ms))) return kiln_fail(s, "kiln_model_get_stats");
  printf("{\"meta\": {\"driver\": \"c\", \"runtime\": \"kiln\", \"version\": \"%s\", \"device\": \"%s\", \"jit\": \"%s\", "
         "\"nodes\": %d, \"clusters\": %d, \"runs\": %" PRId64 ", \"cluster_runs\": %" PRId64
         ", \"op_compiles\": %" PRId64 ", \"op_cache_hits\": %" PRId64 ", \"timer_us\": %.4f}}\n",
         kiln_version(), ms.device ? ms.device : "", ms.jit ? ms.jit : "", ms.nodes, ms.clusters, ms.runs,
         ms.cluster_runs, ms.op_compiles, ms.op_cache_hits, timer_overhead_us());
  kiln_model_free(k.model);
  return 0;
}

/* ------------------------------------------------------------- ONNX Runtime ---- */

/* Opaque ORT objects. */
typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtApi OrtApi; /* indexed below as a table of function pointers */

/* OrtApiBase: what OrtGetApiBase returns. */
typedef struct {
  const OrtApi *(*GetApi)(uint32_t version);
  const char *(*GetVersionString)(void);
} ort_api_base;

/* The enum values used (int-sized C enums in the header). */
enum {
  ORT_FAIL = 1,                        /* OrtErrorCode */
  ORT_LOGGING_LEVEL_WARNING = 2,       /* OrtLoggingLevel */
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1,
  ORT_ARENA_ALLOCATOR = 1,             /* OrtAllocatorType: OrtArenaAllocator */
  ORT_MEM_TYPE_DEFAULT = 0             /* OrtMemType: OrtMemTypeDefault */
};

/* Positions in struct OrtApi (0-based) of the entry points used. */
enum {
  ORT_CreateStatus = 0,
  ORT_GetErrorCode = 1,
  ORT_GetErrorMessage = 2,
  ORT_CreateEnv = 3,
  ORT_CreateSession = 7,
  ORT_Run = 9,
  ORT_CreateSessionOptions = 10,
  ORT_SessionGetInputCount = 30,
  ORT_SessionGetOutputCount = 31,
  ORT_CreateTensorWithDataAsOrtValue = 49,
  ORT_GetTensorMutableData = 51,
  ORT_CreateCpuMemoryInfo = 69,
  ORT_ReleaseEnv = 92,
  ORT_ReleaseStatus = 93,
  ORT_ReleaseMemoryInfo = 94,
  ORT_ReleaseSession = 95,
  ORT_ReleaseValue = 96,
  ORT_ReleaseSessionOptions = 100
};

typedef struct {
  OrtStatus *(*CreateStatus)(int code, const char *msg);
  int (*GetErrorCode)(const OrtStatus *status);
  const char *(*GetErrorMessage)(const OrtStatus *status);
  OrtStatus *(*CreateEnv)(int log_severity_level, const char *logid, OrtEnv **out);
  OrtStatus *(*CreateSession)(const OrtEnv *env, const char *model_path, const OrtSessionOptions *options,
                              OrtSession **out);
  OrtStatus *(*Run)(OrtSession *session, const OrtRunOptions *run_options, const char *const *input_names,
                    const OrtValue *const *inputs, size_t input_len, const char *const *output_names,
                    size_t output_names_len, OrtValue **outputs);
  OrtStatus *(*CreateSessionOptions)(OrtSessionOptions **options);
  OrtStatus *(*SessionGetInputCount)(const OrtSession *session, size_t *out);
  OrtStatus *(*SessionGetOutputCount)(const OrtSession *session, size_t *out);
  OrtStatus *(*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo *info, void *p_data, size_t p_data_len,
                                               const int64_t *shape, size_t shape_len, int type, OrtValue **out);
  OrtStatus *(*GetTensorMutableData)(OrtValue *value, void **out);
  OrtStatus *(*CreateCpuMemoryInfo)(int type, int mem_type, OrtMemoryInfo **out);
  void (*ReleaseEnv)(OrtEnv *);
  void (*ReleaseStatus)(OrtStatus *);
  void (*ReleaseMemoryInfo)(OrtMemoryInfo *);
  void (*ReleaseSession)(OrtSession *);
  void (*ReleaseValue)(OrtValue *);
  void (*ReleaseSessionOptions)(OrtSessionOptions *);
} ort_fns;

typedef void (*any_fn)(void);

static ort_fns g_ort;

#define ORT_BIND(name) memcpy(&g_ort.name, &table[ORT_##name], sizeof g_ort.name)

static void ort_bind(const OrtApi *api) {
  const any_fn *table = (const any_fn *)(const void *)api;
  ORT_BIND(CreateStatus);
  ORT_BIND(GetErrorCode);
  ORT_BIND(GetErrorMessage);
  ORT_BIND(CreateEnv);
  ORT_BIND(CreateSession);
  ORT_BIND(Run);
  ORT_BIND(CreateSessionOptions);
  ORT_BIND(SessionGetInputCount);
  ORT_BIND(SessionGetOutputCount);
  ORT_BIND(CreateTensorWithDataAsOrtValue);
  ORT_BIND(GetTensorMutableData);
  ORT_BIND(CreateCpuMemoryInfo);
  ORT_BIND(ReleaseEnv);
  ORT_BIND(ReleaseStatus);
  ORT_BIND(ReleaseMemoryInfo);
  ORT_BIND(ReleaseSession);
  ORT_BIND(ReleaseValue);
  ORT_BIND(ReleaseSessionOptions);
}

static int ort_fail(OrtStatus *s, const char *what) {
  fprintf(stderr, "overhead_c: onnxruntime: %s: %s\n", what, g_ort.GetErrorMessage(s));
  g_ort.ReleaseStatus(s);
  return 1;
}

#define ORT_CHECK(call, what)                   \
  do {                                          \
    OrtStatus *st_ = (call);                    \
    if (st_) return ort_fail(st_, what);        \
  } while (0)

typedef struct {
  OrtSession *session;
  OrtMemoryInfo *mem;
  OrtValue *prealloc_out; /* over out[] */
  float out[N_ELEMS];
} ort_ctx;

static const char *const ort_in_names[2] = {"a", "b"};
static const char *const ort_out_names[1] = {"c"};

static int ort_wrap_inputs(ort_ctx *o, OrtValue *in[2]) {
  float *data[2] = {g_a, g_b};
  for (int i = 0; i < 2; i++) {
    in[i] = NULL;
    OrtStatus *s = g_ort.CreateTensorWithDataAsOrtValue(o->mem, data[i], sizeof g_a, g_dims, 1,
                                                        ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &in[i]);
    if (s) {
      if (i) g_ort.ReleaseValue(in[0]);
      return ort_fail(s, "CreateTensorWithDataAsOrtValue");
    }
  }
  return 0;
}

static int ort_step_run(void *p) {
  ort_ctx *o = p;
  OrtValue *in[2];
  if (ort_wrap_inputs(o, in)) return 1;
  OrtValue *out[1] = {NULL};
  OrtStatus *s = g_ort.Run(o->session, NULL, ort_in_names, (const OrtValue *const *)in, 2, ort_out_names, 1, out);
  g_ort.ReleaseValue(in[0]);
  g_ort.ReleaseValue(in[1]);
  if (s) return ort_fail(s, "Run");
  void *c = NULL;
  s = g_ort.GetTensorMutableData(out[0], &c);
  if (s) {
    g_ort.ReleaseValue(out[0]);
    return ort_fail(s, "GetTensorMutableData");
  }
  g_sink = ((const float *)c)[N_ELEMS - 1];
  g_ort.ReleaseValue(out[0]);
  return 0;
}

static int ort_step_run_prealloc(void *p) {
  ort_ctx *o = p;
  OrtValue *in[2];
  if (ort_wrap_inputs(o, in)) return 1;
  OrtValue *out[1] = {o->prealloc_out};
  OrtStatus *s = g_ort.Run(o->session, NULL, ort_in_names, (const OrtValue *const *)in, 2, ort_out_names, 1, out);
  g_ort.ReleaseValue(in[0]);
  g_ort.ReleaseValue(in[1]);
  if (s) return ort_fail(s, "Run (preallocated output)");
  if (out[0] != o->prealloc_out) {
    fprintf(stderr, "overhead_c: onnxruntime: Run replaced the preallocated output\n");
    return 1;
  }
  g_sink = o->out[N_ELEMS - 1];
  return 0;
}

static int run_ort(const char *lib, const char *model_path, long warmup, long iters, int64_t *samples) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "overhead_c: cannot load %s: %s (scripts/install-ref-npm.sh installs it)\n", lib, dlerror());
    return 1;
  }
  const ort_api_base *(*get_base)(void);
  void *sym = dlsym(h, "OrtGetApiBase");
  if (!sym) {
    fprintf(stderr, "overhead_c: %s has no OrtGetApiBase\n", lib);
    return 1;
  }
  memcpy(&get_base, &sym, sizeof get_base);
  const ort_api_base *base = get_base();
  const char *version = base->GetVersionString();
  unsigned major = 0, minor = 0;
  if (!version || sscanf(version, "%u.%u", &major, &minor) != 2 || major != 1 || minor < 1) {
    fprintf(stderr, "overhead_c: %s reports version \"%s\": expected 1.x\n", lib, version ? version : "(null)");
    return 1;
  }
  const OrtApi *api = base->GetApi(minor);
  if (!api) {
    fprintf(stderr, "overhead_c: onnxruntime %s does not offer API version %u\n", version, minor);
    return 1;
  }
  ort_bind(api);

  /* The table positions are right if a status round-trips through them. */
  OrtStatus *probe = g_ort.CreateStatus(ORT_FAIL, "overhead probe");
  if (!probe || g_ort.GetErrorCode(probe) != ORT_FAIL || strcmp(g_ort.GetErrorMessage(probe), "overhead probe") != 0) {
    fprintf(stderr, "overhead_c: onnxruntime %s: the OrtApi table does not look as declared\n", version);
    return 1;
  }
  g_ort.ReleaseStatus(probe);

  OrtEnv *env = NULL;
  OrtSessionOptions *so = NULL;
  ort_ctx o = {0};
  ORT_CHECK(g_ort.CreateEnv(ORT_LOGGING_LEVEL_WARNING, "kiln-overhead", &env), "CreateEnv");
  ORT_CHECK(g_ort.CreateSessionOptions(&so), "CreateSessionOptions");
  ORT_CHECK(g_ort.CreateSession(env, model_path, so, &o.session), "CreateSession");
  size_t n_in = 0, n_out = 0;
  ORT_CHECK(g_ort.SessionGetInputCount(o.session, &n_in), "SessionGetInputCount");
  ORT_CHECK(g_ort.SessionGetOutputCount(o.session, &n_out), "SessionGetOutputCount");
  if (n_in != 2 || n_out != 1) {
    fprintf(stderr, "overhead_c: onnxruntime: the session has %zu inputs and %zu outputs, expected 2 and 1\n", n_in,
            n_out);
    return 1;
  }
  ORT_CHECK(g_ort.CreateCpuMemoryInfo(ORT_ARENA_ALLOCATOR, ORT_MEM_TYPE_DEFAULT, &o.mem), "CreateCpuMemoryInfo");
  ORT_CHECK(g_ort.CreateTensorWithDataAsOrtValue(o.mem, o.out, sizeof o.out, g_dims, 1,
                                                 ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &o.prealloc_out),
            "CreateTensorWithDataAsOrtValue (output)");

  /* One checked call of each form before timing. */
  {
    OrtValue *in[2];
    if (ort_wrap_inputs(&o, in)) return 1;
    OrtValue *out[1] = {NULL};
    OrtStatus *s = g_ort.Run(o.session, NULL, ort_in_names, (const OrtValue *const *)in, 2, ort_out_names, 1, out);
    g_ort.ReleaseValue(in[0]);
    g_ort.ReleaseValue(in[1]);
    if (s) return ort_fail(s, "Run");
    void *c = NULL;
    ORT_CHECK(g_ort.GetTensorMutableData(out[0], &c), "GetTensorMutableData");
    int bad = check_sum(c, "ort Run");
    g_ort.ReleaseValue(out[0]);
    if (bad || ort_step_run_prealloc(&o) || check_sum(o.out, "ort Run (preallocated output)")) return 1;
  }

  stats st;
  if (wanted("Run")) {
    if (measure(ort_step_run, &o, warmup, iters, samples, &st)) return 1;
    print_row("ort", "Run", &st, iters, warmup);
  }
  if (wanted("Run (preallocated output)")) {
    memset(o.out, 0, sizeof o.out);
    if (measure(ort_step_run_prealloc, &o, warmup, iters, samples, &st)) return 1;
    if (check_sum(o.out, "ort Run (preallocated output, after timing)")) return 1;
    print_row("ort", "Run (preallocated output)", &st, iters, warmup);
  }
  printf("{\"meta\": {\"driver\": \"c\", \"runtime\": \"ort\", \"version\": \"%s\", \"api_version\": %u, "
         "\"library\": \"%s\", \"timer_us\": %.4f}}\n",
         version, minor, lib, timer_overhead_us());

  g_ort.ReleaseValue(o.prealloc_out);
  g_ort.ReleaseMemoryInfo(o.mem);
  g_ort.ReleaseSession(o.session);
  g_ort.ReleaseSessionOptions(so);
  g_ort.ReleaseEnv(env);
  /* No dlclose: ORT's thread pools and static state outlive a clean unload. */
  return 0;
}

/* ----------------------------------------------------------------------- main ---- */

static void usage(void) {
  fprintf(stderr,
          "usage: overhead_c --runtime kiln|ort --model ADD16.onnx [--ort-lib libonnxruntime.so.1] "
          "[--iters N] [--warmup W] [--only API]\n"
          "  API: kiln_model_run, kiln_model_run_into, Run, \"Run (preallocated output)\"\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *runtime = NULL, *model = NULL, *ort_lib = NULL;
  long iters = 100000, warmup = 1000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--runtime"))
      runtime = v;
    else if (!strcmp(a, "--model"))
      model = v;
    else if (!strcmp(a, "--ort-lib"))
      ort_lib = v;
    else if (!strcmp(a, "--iters"))
      iters = strtol(v, NULL, 10);
    else if (!strcmp(a, "--warmup"))
      warmup = strtol(v, NULL, 10);
    else if (!strcmp(a, "--only"))
      g_only = v;
    else
      usage();
  }
  if (!runtime || !model || iters < 1 || warmup < 0) usage();
  int64_t *samples = malloc((size_t)iters * sizeof *samples);
  if (!samples) {
    fprintf(stderr, "overhead_c: out of memory\n");
    return 1;
  }
  memset(samples, 0, (size_t)iters * sizeof *samples); /* touch the pages before timing */
  fill_inputs();
  int rc;
  if (!strcmp(runtime, "kiln")) {
    rc = run_kiln(model, warmup, iters, samples);
  } else if (!strcmp(runtime, "ort")) {
    if (!ort_lib) usage();
    rc = run_ort(ort_lib, model, warmup, iters, samples);
  } else {
    usage();
    rc = 2;
  }
  free(samples);
  return rc;
}
