/* Private declarations shared by the OpenCL plugin's files: the client (platform,
 * device, context, queue, program cache), device buffers, plugin errors, the launch plan
 * the code generator produces (ocl_codegen.c) and the runtime that builds and runs it
 * (ocl_runtime.c), and the type helpers (ocl_types.c). Nothing here is visible outside
 * the library: only kiln_plugin_init is exported (version script, hidden visibility). */
#ifndef KILN_OPENCL_OCL_INTERNAL_H
#define KILN_OPENCL_OCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/plugin.h"
#include "ocl_hlo.h"

/* ---- errors (ocl_plugin.c) ---- */
struct kiln_plugin_error {
  int code;
  char *message;
};
kiln_plugin_error *ocl_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "CL_OUT_OF_RESOURCES" for an OpenCL status code. */
const char *ocl_cl_error_name(cl_int status);
/* An error for a failed OpenCL call: "WHAT failed: CL_..." (INTERNAL; RESOURCE_EXHAUSTED
 * for the allocation failures). */
kiln_plugin_error *ocl_cl_error(const char *what, cl_int status);

/* Writes a message to the host's log (when it gave a log callback). */
void ocl_log(const kiln_plugin_client *c, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Loads the OpenCL drivers deep-bound when another LLVM shares the process (ocl_icd.c);
 * mode is the opencl.deepbind option (NULL: automatic). */
void ocl_preload_drivers(const char *mode);

/* ---- what the generator needs to know about the device ---- */
typedef struct ocl_caps {
  size_t max_work_group; /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
  size_t local_mem;      /* CL_DEVICE_LOCAL_MEM_SIZE */
  size_t max_param_bytes; /* CL_DEVICE_MAX_PARAMETER_SIZE (0: unknown) */
  int has_fp64;
  int correct_div_sqrt; /* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT */
} ocl_caps;

/* ---- the program cache entry (ocl_runtime.c) ---- */
typedef struct ocl_cached_program {
  char *source;
  cl_program program;
  struct ocl_cached_program *next;
} ocl_cached_program;

struct kiln_plugin_client {
  const kiln_plugin_host *host;
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  ocl_caps caps;
  char *description;
  size_t memory_bytes;
  pthread_mutex_t lock;       /* the queue and kernel arguments (execute, transfers) */
  pthread_mutex_t cache_lock; /* the program cache */
  ocl_cached_program *cache;
};

struct kiln_plugin_buffer {
  cl_mem mem; /* at least 1 byte, even for zero elements */
  int dtype;
  size_t rank;
  size_t dims[KILN_PLUGIN_MAX_RANK];
  size_t bytes; /* elements * element size (0 for empty arrays) */
};

/* Creates a buffer object around mem (taking over the reference). */
kiln_plugin_error *ocl_buffer_wrap(cl_mem mem, int dtype, size_t rank, const int64_t *dims, kiln_plugin_buffer **out);

/* ---- the launch plan (ocl_codegen.c) ---- */
enum { OCL_REF_PARAM = 0, OCL_REF_CONST = 1, OCL_REF_TEMP = 2 };

typedef struct ocl_ref {
  int kind;     /* OCL_REF_* */
  int index;    /* parameter number, constant number, or the kernel that writes the temp */
  int identity; /* every read of it in this kernel is at the kernel's own output index */
} ocl_ref;

typedef struct ocl_kernel_plan {
  char name[24];
  int dtype;
  int rank;
  int64_t dims[OCL_MAX_RANK];
  int64_t n_elems;
  size_t bytes;
  int n_refs;
  ocl_ref *refs; /* kernel arguments, in order, before the output and the element count */
  int work_dim;  /* 0: one work-item per element (1-D, no work-group size); else this ND range */
  size_t global[3], local[3];
} ocl_kernel_plan;

typedef struct ocl_const_plan {
  void *data;
  size_t bytes;
} ocl_const_plan;

typedef struct ocl_param_plan {
  int dtype;
  int rank;
  int64_t dims[OCL_MAX_RANK];
} ocl_param_plan;

typedef struct ocl_plan {
  char *source;
  int n_kernels;
  ocl_kernel_plan *kernels;
  int n_consts;
  ocl_const_plan *consts;
  int n_params;
  ocl_param_plan *params;
  int n_results;
  int *result_kernel; /* result slot -> the kernel whose output it is */
} ocl_plan;

/* Generates OpenCL C for the module's entry computation. On failure returns a
 * KILN_PLUGIN_ERR_* code (UNIMPLEMENTED for an instruction the device lacks) and writes
 * why into err. */
int ocl_codegen(const ocl_module *m, const ocl_caps *caps, ocl_plan **out, char *err, size_t err_cap);
void ocl_plan_free(ocl_plan *p);

/* Whether the generator accepts this instruction (its opcode, types and attributes);
 * why names the reason when not. Checks called computations' instructions too when
 * they are scalar reducers. */
int ocl_instr_supported(const ocl_instr *ins, const ocl_caps *caps, char *why, size_t why_cap);
/* Whether the operand / result shapes and shape attributes add up (a malformed module is
 * INVALID_ARGUMENT, never a device read out of bounds). */
int ocl_instr_shapes_ok(const ocl_instr *ins, char *why, size_t why_cap);
/* Opcode x result dtype (0 for tuples): the table op_supported answers from. */
int ocl_op_supported(const char *opcode, int dtype, const ocl_caps *caps);

/* ---- types (ocl_types.c) ---- */
/* "f32" for KILN_DTYPE_F32; NULL when unknown. */
const char *ocl_dtype_name(int dtype);
int ocl_dtype_from_name(const char *name, size_t len);
/* OpenCL C storage type ("ushort" for f16) and compute type ("float" for f16). */
const char *ocl_storage_type(int dtype);
const char *ocl_compute_type(int dtype);
int ocl_dtype_is_float(int dtype); /* f16 bf16 f32 f64 */
int ocl_dtype_is_int(int dtype);   /* s* u* (not pred) */
int ocl_dtype_is_signed(int dtype);
int ocl_dtype_bits(int dtype);
/* The helper functions every program starts with (half conversions, XLA integer rules). */
extern const char ocl_preamble[];

/* ---- runtime (ocl_runtime.c) ---- */
struct kiln_plugin_executable {
  ocl_plan *plan;
  cl_program program;
  cl_kernel *kernels;
  cl_mem *consts;
};

/* Builds (or finds in the client's cache) the program for plan->source and creates its
 * kernels and constant buffers. When a kernel's fixed work-group size exceeds what the
 * device allows for it, sets *wg_too_small and returns NULL with *out NULL (plan freed). */
kiln_plugin_error *ocl_runtime_prepare(kiln_plugin_client *c, ocl_plan *plan, kiln_plugin_executable **out,
                                       int *wg_too_small);
void ocl_runtime_release(kiln_plugin_executable *exe);
kiln_plugin_error *ocl_runtime_execute(kiln_plugin_client *c, kiln_plugin_execute_args *a);
void ocl_cache_clear(kiln_plugin_client *c);

#endif
