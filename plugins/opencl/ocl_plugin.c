/* The OpenCL plugin's ABI-2 surface (kiln/plugin.h): the function table kiln_plugin_init
 * returns, errors, the client (platform and device choice — the first GPU, else the first
 * device, or the ones whose names contain the opencl.platform / opencl.device option
 * values — with its context and in-order queue), the one kiln device "opencl" per client,
 * device buffers (one cl_mem each, at least one byte so empty arrays work), compile
 * (parse the HLO text with ocl_parse_module, generate code with ocl_codegen, build with
 * the runtime) and execute, and the support queries op_supported / instruction_supported
 * that answer exactly what compile accepts. Nothing aborts on bad input: every failure is
 * a kiln_plugin_error with a code and a message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

/* ------------------------------------------------------------------ errors ----- */

/* Returned when even the error cannot be allocated; never freed. */
static kiln_plugin_error oom_error = {KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, (char *)"out of memory"};

kiln_plugin_error *ocl_error(int code, const char *fmt, ...) {
  kiln_plugin_error *e = calloc(1, sizeof *e);
  if (!e) return &oom_error;
  e->code = code;
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  e->message = malloc(n > 0 ? (size_t)n + 1 : 1);
  if (e->message) vsnprintf(e->message, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
  va_end(ap);
  return e;
}

const char *ocl_cl_error_name(cl_int s) {
  switch (s) {
#define N(x) case x: return #x;
    N(CL_SUCCESS) N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_PROFILING_INFO_NOT_AVAILABLE) N(CL_MEM_COPY_OVERLAP) N(CL_IMAGE_FORMAT_MISMATCH)
    N(CL_IMAGE_FORMAT_NOT_SUPPORTED) N(CL_BUILD_PROGRAM_FAILURE) N(CL_MAP_FAILURE)
    N(CL_MISALIGNED_SUB_BUFFER_OFFSET) N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    N(CL_COMPILE_PROGRAM_FAILURE) N(CL_LINKER_NOT_AVAILABLE) N(CL_LINK_PROGRAM_FAILURE)
    N(CL_DEVICE_PARTITION_FAILED) N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) N(CL_INVALID_VALUE)
    N(CL_INVALID_DEVICE_TYPE) N(CL_INVALID_PLATFORM) N(CL_INVALID_DEVICE) N(CL_INVALID_CONTEXT)
    N(CL_INVALID_QUEUE_PROPERTIES) N(CL_INVALID_COMMAND_QUEUE) N(CL_INVALID_HOST_PTR)
    N(CL_INVALID_MEM_OBJECT) N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) N(CL_INVALID_IMAGE_SIZE)
    N(CL_INVALID_SAMPLER) N(CL_INVALID_BINARY) N(CL_INVALID_BUILD_OPTIONS) N(CL_INVALID_PROGRAM)
    N(CL_INVALID_PROGRAM_EXECUTABLE) N(CL_INVALID_KERNEL_NAME) N(CL_INVALID_KERNEL_DEFINITION)
    N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE) N(CL_INVALID_ARG_SIZE)
    N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE)
    N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_EVENT_WAIT_LIST)
    N(CL_INVALID_EVENT) N(CL_INVALID_OPERATION) N(CL_INVALID_GL_OBJECT) N(CL_INVALID_BUFFER_SIZE)
    N(CL_INVALID_MIP_LEVEL) N(CL_INVALID_GLOBAL_WORK_SIZE) N(CL_INVALID_PROPERTY)
    N(CL_INVALID_IMAGE_DESCRIPTOR) N(CL_INVALID_COMPILER_OPTIONS) N(CL_INVALID_LINKER_OPTIONS)
    N(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
  }
}

kiln_plugin_error *ocl_cl_error(const char *what, cl_int s) {
  int code = (s == CL_OUT_OF_HOST_MEMORY || s == CL_OUT_OF_RESOURCES || s == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
              s == CL_INVALID_BUFFER_SIZE)
                 ? KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED
                 : KILN_PLUGIN_ERR_INTERNAL;
  return ocl_error(code, "%s failed: %s (%d)", what, ocl_cl_error_name(s), (int)s);
}

void ocl_log(const kiln_plugin_client *c, int level, const char *fmt, ...) {
  if (!c || !c->host || c->host->struct_size < offsetof(kiln_plugin_host, log) + sizeof c->host->log || !c->host->log)
    return;
  char msg[16384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  c->host->log(c->host->host_data, level, msg);
}

static int err_code(const kiln_plugin_error *e) { return e ? e->code : 0; }
static const char *err_message(const kiln_plugin_error *e) {
  return e && e->message ? e->message : "out of memory";
}
static void err_destroy(kiln_plugin_error *e) {
  if (!e || e == &oom_error) return;
  free(e->message);
  free(e);
}

/* Reads an optional argument-struct field only when the host's struct holds it. */
#define HAS_FIELD(args, field) ((args)->struct_size >= offsetof(__typeof__(*(args)), field) + sizeof((args)->field))

/* ------------------------------------------------------------------ client ----- */

static char *info_str(cl_int (*get)(void *, cl_uint, size_t, void *, size_t *), void *obj, cl_uint what) {
  size_t n = 0;
  if (get(obj, what, 0, NULL, &n) != CL_SUCCESS) return strdup("?");
  char *s = malloc(n + 1);
  if (!s) return NULL;
  if (get(obj, what, n, s, NULL) != CL_SUCCESS) s[0] = 0;
  s[n] = 0;
  return s;
}
static cl_int get_platform(void *o, cl_uint w, size_t n, void *v, size_t *r) {
  return clGetPlatformInfo((cl_platform_id)o, w, n, v, r);
}
static cl_int get_device(void *o, cl_uint w, size_t n, void *v, size_t *r) {
  return clGetDeviceInfo((cl_device_id)o, w, n, v, r);
}

static const char *option(const kiln_plugin_option *opts, size_t n, const char *key) {
  for (size_t i = 0; opts && i < n; i++)
    if (opts[i].key && !strcmp(opts[i].key, key)) return opts[i].value ? opts[i].value : "";
  return NULL;
}

static void client_free(kiln_plugin_client *c) {
  if (!c) return;
  ocl_cache_clear(c);
  if (c->queue) clReleaseCommandQueue(c->queue);
  if (c->context) clReleaseContext(c->context);
  free(c->description);
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->cache_lock);
  free(c);
}

static kiln_plugin_error *client_create(kiln_plugin_client_create_args *a) {
  if (!a || a->struct_size < offsetof(kiln_plugin_client_create_args, client) + sizeof a->client)
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "client_create: argument struct too small");
  a->client = NULL;
  const char *want_platform = option(a->options, a->n_options, "opencl.platform");
  const char *want_device = option(a->options, a->n_options, "opencl.device");
  ocl_preload_drivers(option(a->options, a->n_options, "opencl.deepbind"));
  cl_uint np = 0;
  cl_int st = clGetPlatformIDs(0, NULL, &np);
  if (st != CL_SUCCESS || np == 0)
    return ocl_error(KILN_PLUGIN_ERR_UNAVAILABLE, "no OpenCL platform found (%s)",
                     st == CL_SUCCESS ? "none installed" : ocl_cl_error_name(st));
  cl_platform_id *plats = calloc(np, sizeof *plats);
  if (!plats) return ocl_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  clGetPlatformIDs(np, plats, NULL);
  cl_platform_id best_p = NULL, first_p = NULL;
  cl_device_id best_d = NULL, first_d = NULL;
  for (cl_uint p = 0; p < np && !best_d; p++) {
    char *pname = info_str(get_platform, plats[p], CL_PLATFORM_NAME);
    int pmatch = !want_platform || (pname && strstr(pname, want_platform));
    free(pname);
    if (!pmatch) continue;
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
    cl_device_id *devs = calloc(nd, sizeof *devs);
    if (!devs) continue;
    clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
    for (cl_uint d = 0; d < nd && !best_d; d++) {
      char *dname = info_str(get_device, devs[d], CL_DEVICE_NAME);
      int dmatch = !want_device || (dname && strstr(dname, want_device));
      free(dname);
      if (!dmatch) continue;
      cl_device_type type = 0;
      clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      if (!first_d) {
        first_d = devs[d];
        first_p = plats[p];
      }
      if ((type & CL_DEVICE_TYPE_GPU) || want_device) {
        best_d = devs[d];
        best_p = plats[p];
      }
    }
    free(devs);
  }
  free(plats);
  if (!best_d) {
    best_d = first_d;
    best_p = first_p;
  }
  if (!best_d)
    return ocl_error(KILN_PLUGIN_ERR_UNAVAILABLE, "no OpenCL device found%s%s%s%s",
                     want_platform ? " on a platform matching '" : "", want_platform ? want_platform : "",
                     want_device ? "' matching device '" : (want_platform ? "'" : ""), want_device ? want_device : "");
  kiln_plugin_client *c = calloc(1, sizeof *c);
  if (!c) return ocl_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->cache_lock, NULL);
  c->host = a->host;
  c->platform = best_p;
  c->device = best_d;
  cl_context_properties props[3] = {CL_CONTEXT_PLATFORM, (cl_context_properties)best_p, 0};
  c->context = clCreateContext(props, 1, &best_d, NULL, NULL, &st);
  if (st != CL_SUCCESS) {
    c->context = NULL;
    client_free(c);
    return ocl_error(KILN_PLUGIN_ERR_UNAVAILABLE, "clCreateContext failed: %s", ocl_cl_error_name(st));
  }
  c->queue = clCreateCommandQueue(c->context, best_d, 0, &st);
  if (st != CL_SUCCESS) {
    c->queue = NULL;
    client_free(c);
    return ocl_error(KILN_PLUGIN_ERR_UNAVAILABLE, "clCreateCommandQueue failed: %s", ocl_cl_error_name(st));
  }
  cl_ulong mem = 0;
  clGetDeviceInfo(best_d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
  c->memory_bytes = (size_t)mem;
  cl_device_fp_config fp64 = 0, fp32 = 0;
  clGetDeviceInfo(best_d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
  clGetDeviceInfo(best_d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp32, &fp32, NULL);
  char *ext = info_str(get_device, best_d, CL_DEVICE_EXTENSIONS);
  c->caps.has_fp64 = fp64 != 0 && ext && strstr(ext, "cl_khr_fp64") != NULL;
  c->caps.correct_div_sqrt = (fp32 & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  size_t wg = 0;
  cl_ulong lmem = 0;
  clGetDeviceInfo(best_d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  clGetDeviceInfo(best_d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
  c->caps.max_work_group = wg;
  c->caps.local_mem = (size_t)lmem;
  size_t params = 0;
  clGetDeviceInfo(best_d, CL_DEVICE_MAX_PARAMETER_SIZE, sizeof params, &params, NULL);
  c->caps.max_param_bytes = params;
  const char *tiling = option(a->options, a->n_options, "opencl.tiled_dot");
  if (tiling && !strcmp(tiling, "0")) c->caps.max_work_group = 0; /* disables the tiled matmul */
  free(ext);
  char *pn = info_str(get_platform, best_p, CL_PLATFORM_NAME);
  char *dn = info_str(get_device, best_d, CL_DEVICE_NAME);
  char *dv = info_str(get_device, best_d, CL_DRIVER_VERSION);
  size_t len = (pn ? strlen(pn) : 1) + (dn ? strlen(dn) : 1) + (dv ? strlen(dv) : 1) + 64;
  c->description = malloc(len);
  if (c->description)
    snprintf(c->description, len, "OpenCL: %s / %s (driver %s)%s", pn ? pn : "?", dn ? dn : "?", dv ? dv : "?",
             c->caps.has_fp64 ? "" : ", no fp64");
  free(pn);
  free(dn);
  free(dv);
  a->client = c;
  return NULL;
}

static void client_destroy(kiln_plugin_client *c) {
  if (c && c->queue) clFinish(c->queue);
  client_free(c);
}

static kiln_plugin_error *device_count(kiln_plugin_device_count_args *a) {
  if (!a || !a->client) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "device_count: no client");
  a->n_devices = 1;
  return NULL;
}

static kiln_plugin_error *device_info(kiln_plugin_device_info_args *a) {
  if (!a || !a->client) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "device_info: no client");
  if (a->device != 0) return ocl_error(KILN_PLUGIN_ERR_NOT_FOUND, "device_info: no device %d", a->device);
  a->name = "opencl";
  a->description = a->client->description ? a->client->description : "OpenCL";
  if (HAS_FIELD(a, memory_bytes)) a->memory_bytes = a->client->memory_bytes;
  return NULL;
}

/* ------------------------------------------------------------------ buffers ---- */

kiln_plugin_error *ocl_buffer_wrap(cl_mem mem, int dtype, size_t rank, const int64_t *dims, kiln_plugin_buffer **out) {
  kiln_plugin_buffer *b = calloc(1, sizeof *b);
  if (!b) {
    clReleaseMemObject(mem);
    return ocl_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  b->mem = mem;
  b->dtype = dtype;
  b->rank = rank;
  size_t n = 1;
  for (size_t k = 0; k < rank; k++) {
    b->dims[k] = (size_t)dims[k];
    n *= b->dims[k];
  }
  b->bytes = n * ocl_dtype_size(dtype);
  *out = b;
  return NULL;
}

static kiln_plugin_error *buffer_from_host(kiln_plugin_buffer_from_host_args *a) {
  if (!a || !a->client) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_from_host: no client");
  a->buffer = NULL;
  kiln_plugin_client *c = a->client;
  if (a->device != 0) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_from_host: no device %d", a->device);
  if (!ocl_dtype_name(a->dtype))
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_from_host: unknown dtype %d", a->dtype);
  if (a->rank > KILN_PLUGIN_MAX_RANK || (a->rank && !a->dims))
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_from_host: bad rank %zu", a->rank);
  size_t n = ocl_dtype_size(a->dtype);
  for (size_t k = 0; k < a->rank; k++) {
    if (a->dims[k] && n > SIZE_MAX / a->dims[k])
      return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_from_host: size overflows");
    n *= a->dims[k];
  }
  if (a->data && a->n_bytes != n)
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_from_host: %zu bytes given, the shape needs %zu",
                     a->n_bytes, n);
  cl_int st;
  cl_mem m = clCreateBuffer(c->context, CL_MEM_READ_WRITE | (a->data && n ? CL_MEM_COPY_HOST_PTR : 0), n ? n : 1,
                            a->data && n ? (void *)a->data : NULL, &st);
  if (st != CL_SUCCESS) return ocl_cl_error("clCreateBuffer", st);
  int64_t dims[KILN_PLUGIN_MAX_RANK];
  for (size_t k = 0; k < a->rank; k++) dims[k] = (int64_t)a->dims[k];
  return ocl_buffer_wrap(m, a->dtype, a->rank, dims, &a->buffer);
}

static kiln_plugin_error *buffer_to_host(kiln_plugin_buffer_to_host_args *a) {
  if (!a || !a->client || !a->buffer) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_to_host: no buffer");
  const kiln_plugin_buffer *b = a->buffer;
  if (a->n_bytes != b->bytes)
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_to_host: %zu bytes asked, the buffer has %zu", a->n_bytes,
                     b->bytes);
  if (!b->bytes) return NULL;
  if (!a->dst) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_to_host: no destination");
  pthread_mutex_lock(&a->client->lock);
  cl_int st = clEnqueueReadBuffer(a->client->queue, b->mem, CL_TRUE, 0, b->bytes, a->dst, 0, NULL, NULL);
  pthread_mutex_unlock(&a->client->lock);
  if (st != CL_SUCCESS) return ocl_cl_error("clEnqueueReadBuffer", st);
  return NULL;
}

static kiln_plugin_error *buffer_shape(kiln_plugin_buffer_shape_args *a) {
  if (!a || !a->buffer) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "buffer_shape: no buffer");
  a->dtype = a->buffer->dtype;
  a->rank = a->buffer->rank;
  memcpy(a->dims, a->buffer->dims, sizeof a->dims);
  if (HAS_FIELD(a, device)) a->device = 0;
  return NULL;
}

static void buffer_destroy(kiln_plugin_client *c, kiln_plugin_buffer *b) {
  (void)c;
  if (!b) return;
  if (b->mem) clReleaseMemObject(b->mem);
  free(b);
}

/* ------------------------------------------------------------------ compile ---- */

static kiln_plugin_error *compile(kiln_plugin_compile_args *a) {
  if (!a || !a->client) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "compile: no client");
  a->executable = NULL;
  if (a->device != 0) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "compile: no device %d", a->device);
  if (a->format && strcmp(a->format, KILN_PLUGIN_FORMAT_HLO_TEXT))
    return ocl_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "compile: format '%s' is not supported (only hlo-text)", a->format);
  if (!a->module) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "compile: no module text");
  ocl_module *m = NULL;
  char err[1024] = "";
  if (ocl_parse_module(a->module, a->module_len, &m, err, sizeof err) != 0 || !m) {
    if (m) ocl_module_free(m);
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "compile: cannot parse the module: %s", err);
  }
  const char *dump = option(a->options, a->n_options, "opencl.dump_source");
  ocl_caps caps = a->client->caps;
  kiln_plugin_error *e = NULL;
  for (int attempt = 0; attempt < 2; attempt++) {
    ocl_plan *plan = NULL;
    int code = ocl_codegen(m, &caps, &plan, err, sizeof err);
    if (code) {
      ocl_module_free(m);
      return ocl_error(code, "%s", err);
    }
    ocl_log(a->client, KILN_PLUGIN_LOG_DEBUG, "opencl: %d kernels, %d array constants, %zu bytes of OpenCL C",
            plan->n_kernels, plan->n_consts, strlen(plan->source));
    if (dump && strcmp(dump, "0")) {
      const char *body = strstr(plan->source, "/* end of preamble */"); /* skip the helpers */
      ocl_log(a->client, KILN_PLUGIN_LOG_INFO, "%s", body ? body : plan->source);
    }
    int wg_too_small = 0;
    e = ocl_runtime_prepare(a->client, plan, &a->executable, &wg_too_small);
    if (!wg_too_small) break;
    /* A kernel cannot run the work-group size its tiled / tree form needs on this
     * device: generate again without those forms. */
    ocl_log(a->client, KILN_PLUGIN_LOG_DEBUG, "opencl: work-group kernels too large here, regenerating without them");
    caps.max_work_group = 0;
  }
  ocl_module_free(m);
  if (!e && !a->executable) e = ocl_error(KILN_PLUGIN_ERR_INTERNAL, "compile: no work-group size fits this device");
  return e;
}

static void executable_destroy(kiln_plugin_client *c, kiln_plugin_executable *exe) {
  (void)c;
  ocl_runtime_release(exe);
}

static kiln_plugin_error *execute(kiln_plugin_execute_args *a) {
  if (!a || !a->client) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: no client");
  if (a->n_args && !a->args) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: no argument array");
  if (!a->results && a->max_results) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: no result array");
  return ocl_runtime_execute(a->client, a);
}

/* ------------------------------------------------------------------ support ---- */

static kiln_plugin_error *op_supported(kiln_plugin_op_supported_args *a) {
  if (!a || !a->client || !a->opcode) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "op_supported: bad arguments");
  a->supported = ocl_op_supported(a->opcode, a->dtype, &a->client->caps);
  return NULL;
}

/* One instruction line, read without a symbol table: the result type, the opcode, the
 * operands' element types and the attributes that decide support. */
static int dtype_token(const char *s, const char *end, const char **after) {
  const char *p = s;
  while (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))) p++;
  *after = p;
  if (p == s || p >= end || *p != '[') return 0;
  return ocl_dtype_from_name(s, (size_t)(p - s));
}

static kiln_plugin_error *instruction_supported(kiln_plugin_instruction_supported_args *a) {
  if (!a || !a->client || !a->hlo_text)
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "instruction_supported: bad arguments");
  const ocl_caps *caps = &a->client->caps;
  const char *s = a->hlo_text, *end = s + a->hlo_text_len, *p;
  a->supported = 0;
  p = memchr(s, '=', (size_t)(end - s));
  if (!p) return NULL;
  p++;
  while (p < end && *p == ' ') p++;
  int rtype = 0, tuple = 0;
  if (p < end && *p == '(') {
    tuple = 1;
    int depth = 0;
    for (; p < end; p++) {
      if (*p == '(') depth++;
      else if (*p == ')' && --depth == 0) {
        p++;
        break;
      }
    }
  } else {
    rtype = dtype_token(p, end, &p);
    if (!rtype) return NULL; /* token[] or unknown type */
    while (p < end && *p != ' ') p++;
  }
  while (p < end && *p == ' ') p++;
  const char *op = p;
  while (p < end && *p != '(' && *p != ' ') p++;
  char opcode[64];
  size_t ol = (size_t)(p - op);
  if (ol == 0 || ol >= sizeof opcode) return NULL;
  memcpy(opcode, op, ol);
  opcode[ol] = 0;
  if (!ocl_op_supported(opcode, tuple ? 0 : rtype, caps)) return NULL;
  /* Every element type named in the line must be usable here. */
  int operand_types[8], n_ot = 0;
  int depth = 0;
  for (const char *t = p; t < end; t++) {
    if (*t == '(') depth++;
    if (*t == ')') depth--;
    if ((*t >= 'a' && *t <= 'z') && (t == s || !((t[-1] >= 'a' && t[-1] <= 'z') || (t[-1] >= '0' && t[-1] <= '9') ||
                                                  t[-1] == '_' || t[-1] == '.' || t[-1] == '%' || t[-1] == '-'))) {
      const char *after;
      int dt = dtype_token(t, end, &after);
      if (dt) {
        if (dt == KILN_DTYPE_F64 && !caps->has_fp64) return NULL;
        if (depth == 1 && n_ot < 8) operand_types[n_ot++] = dt;
      }
      t = after - 1;
    }
  }
  if (!strcmp(opcode, "is-finite") && (n_ot < 1 || !ocl_dtype_is_float(operand_types[0]))) return NULL;
  if ((!strcmp(opcode, "dot") || !strcmp(opcode, "convolution"))) {
    for (int i = 0; i < n_ot; i++)
      if (operand_types[i] == KILN_DTYPE_PRED) return NULL;
    for (const char *t = s; t + 18 < end; t++)
      if (!memcmp(t, "batch_group_count=", 18) && (t[18] != '1' || (t + 19 < end && t[19] >= '0' && t[19] <= '9')))
        return NULL;
  }
  if (!strcmp(opcode, "bitcast-convert") &&
      (n_ot != 1 || operand_types[0] == KILN_DTYPE_PRED || ocl_dtype_bits(operand_types[0]) != ocl_dtype_bits(rtype)))
    return NULL;
  if (!strcmp(opcode, "compare") && n_ot == 2 && operand_types[0] != operand_types[1]) return NULL;
  if (!strcmp(opcode, "reduce-window") && n_ot != 2) return NULL;
  if (!strcmp(opcode, "reduce") && (n_ot < 2 || n_ot % 2)) return NULL;
  a->supported = 1;
  return NULL;
}

/* ------------------------------------------------------------------ table ------ */

static const kiln_plugin_api api = {
    sizeof(kiln_plugin_api),
    KILN_PLUGIN_API_MAJOR,
    KILN_PLUGIN_API_MINOR,
    "opencl",
    "0.1",
    err_code,
    err_message,
    err_destroy,
    client_create,
    client_destroy,
    device_count,
    device_info,
    compile,
    executable_destroy,
    execute,
    buffer_from_host,
    buffer_to_host,
    buffer_shape,
    buffer_destroy,
    op_supported,
    instruction_supported,
};

KILN_PLUGIN_EXPORT kiln_plugin_error *kiln_plugin_init(const kiln_plugin_api **out) {
  if (out) *out = &api;
  return NULL;
}
