/* The OpenCL plugin's runtime: builds generated programs (cached in the client by source
 * text; one client has one device, so the text is the whole key), creates an executable's
 * kernels and uploads its array constants, and runs a launch plan: one temporary buffer
 * per materialized instruction, kernels enqueued in order on the client's in-order queue
 * (so no events are needed), results handed to the host as new buffers. A donated
 * argument whose dtype and dims match a result, read only by that result's kernel and
 * only at the kernel's own output index, becomes the result's memory (the kernel then
 * writes in place). Build failures are INTERNAL errors carrying the build log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

static kiln_plugin_error *build_program(kiln_plugin_client *c, const char *source, cl_program *out) {
  *out = NULL;
  pthread_mutex_lock(&c->cache_lock);
  for (ocl_cached_program *e = c->cache; e; e = e->next)
    if (!strcmp(e->source, source)) {
      clRetainProgram(e->program);
      *out = e->program;
      pthread_mutex_unlock(&c->cache_lock);
      return NULL;
    }
  pthread_mutex_unlock(&c->cache_lock);
  cl_int st;
  const char *srcs[1] = {source};
  cl_program prog = clCreateProgramWithSource(c->context, 1, srcs, NULL, &st);
  if (st != CL_SUCCESS) return ocl_cl_error("clCreateProgramWithSource", st);
  char opts[256];
  snprintf(opts, sizeof opts, "-cl-std=CL1.2%s%s", c->caps.has_fp64 ? " -DKILN_FP64" : "",
           c->caps.correct_div_sqrt ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
  st = clBuildProgram(prog, 1, &c->device, opts, NULL, NULL);
  if (st != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, c->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = malloc(n + 1);
    if (log) {
      log[0] = 0;
      clGetProgramBuildInfo(prog, c->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
      log[n] = 0;
    }
    kiln_plugin_error *e = ocl_error(KILN_PLUGIN_ERR_INTERNAL, "clBuildProgram failed (%s); build log:\n%s",
                                     ocl_cl_error_name(st), log ? log : "(out of memory)");
    free(log);
    clReleaseProgram(prog);
    return e;
  }
  ocl_cached_program *ent = calloc(1, sizeof *ent);
  char *copy = ent ? strdup(source) : NULL;
  if (ent && copy) {
    ent->source = copy;
    ent->program = prog;
    clRetainProgram(prog);
    pthread_mutex_lock(&c->cache_lock);
    ent->next = c->cache;
    c->cache = ent;
    pthread_mutex_unlock(&c->cache_lock);
  } else {
    free(ent);
    free(copy);
  }
  *out = prog;
  return NULL;
}

void ocl_cache_clear(kiln_plugin_client *c) {
  while (c->cache) {
    ocl_cached_program *n = c->cache->next;
    clReleaseProgram(c->cache->program);
    free(c->cache->source);
    free(c->cache);
    c->cache = n;
  }
}

void ocl_runtime_release(kiln_plugin_executable *exe) {
  if (!exe) return;
  if (exe->kernels)
    for (int i = 0; i < exe->plan->n_kernels; i++)
      if (exe->kernels[i]) clReleaseKernel(exe->kernels[i]);
  if (exe->consts)
    for (int i = 0; i < exe->plan->n_consts; i++)
      if (exe->consts[i]) clReleaseMemObject(exe->consts[i]);
  if (exe->program) clReleaseProgram(exe->program);
  free(exe->kernels);
  free(exe->consts);
  ocl_plan_free(exe->plan);
  free(exe);
}

kiln_plugin_error *ocl_runtime_prepare(kiln_plugin_client *c, ocl_plan *plan, kiln_plugin_executable **out,
                                       int *wg_too_small) {
  *out = NULL;
  *wg_too_small = 0;
  kiln_plugin_executable *exe = calloc(1, sizeof *exe);
  if (!exe) {
    ocl_plan_free(plan);
    return ocl_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  exe->plan = plan;
  exe->kernels = calloc((size_t)plan->n_kernels + 1, sizeof *exe->kernels);
  exe->consts = calloc((size_t)plan->n_consts + 1, sizeof *exe->consts);
  kiln_plugin_error *err = NULL;
  if (!exe->kernels || !exe->consts) {
    err = ocl_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    goto fail;
  }
  if ((err = build_program(c, plan->source, &exe->program))) goto fail;
  for (int i = 0; i < plan->n_kernels; i++) {
    cl_int st;
    exe->kernels[i] = clCreateKernel(exe->program, plan->kernels[i].name, &st);
    if (st != CL_SUCCESS) {
      err = ocl_cl_error("clCreateKernel", st);
      goto fail;
    }
    /* OCL_TEST_SMALL_WG pretends every fixed work-group size is too large (tests the
     * fallback on devices where they all fit). */
    const ocl_kernel_plan *kp = &plan->kernels[i];
    if (kp->work_dim) {
      size_t most = 0;
      if (clGetKernelWorkGroupInfo(exe->kernels[i], c->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most, NULL) ==
              CL_SUCCESS &&
          (most < kp->local[0] * kp->local[1] * kp->local[2] || getenv("OCL_TEST_SMALL_WG"))) {
        *wg_too_small = 1;
        goto fail;
      }
    }
  }
  for (int i = 0; i < plan->n_consts; i++) {
    cl_int st;
    size_t n = plan->consts[i].bytes;
    exe->consts[i] = clCreateBuffer(c->context, CL_MEM_READ_ONLY | (n ? CL_MEM_COPY_HOST_PTR : 0), n ? n : 1,
                                    n ? plan->consts[i].data : NULL, &st);
    if (st != CL_SUCCESS) {
      err = ocl_cl_error("clCreateBuffer (constant)", st);
      goto fail;
    }
  }
  *out = exe;
  return NULL;
fail:
  ocl_runtime_release(exe);
  return err;
}

static int dims_match(const kiln_plugin_buffer *b, int dtype, int rank, const int64_t *dims) {
  if (b->dtype != dtype || (int)b->rank != rank) return 0;
  for (int k = 0; k < rank; k++)
    if ((int64_t)b->dims[k] != dims[k]) return 0;
  return 1;
}

kiln_plugin_error *ocl_runtime_execute(kiln_plugin_client *c, kiln_plugin_execute_args *a) {
  kiln_plugin_executable *exe = a->executable;
  if (!exe) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: no executable");
  ocl_plan *p = exe->plan;
  a->n_results = 0;
  if ((int)a->n_args != p->n_params)
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: %zu arguments given, the module takes %d", a->n_args,
                     p->n_params);
  if (a->max_results < (size_t)p->n_results)
    return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: room for %zu results, the module has %d",
                     a->max_results, p->n_results);
  for (int i = 0; i < p->n_params; i++) {
    const kiln_plugin_buffer *b = a->args[i];
    if (!b) return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: argument %d is NULL", i);
    if (!dims_match(b, p->params[i].dtype, p->params[i].rank, p->params[i].dims))
      return ocl_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "execute: argument %d does not have parameter %d's shape", i, i);
  }
  /* Donation: kernel k writes into argument i's memory. */
  int *donor = calloc((size_t)p->n_kernels + 1, sizeof *donor);
  int *is_result = calloc((size_t)p->n_kernels + 1, sizeof *is_result);
  cl_mem *temps = calloc((size_t)p->n_kernels + 1, sizeof *temps);
  kiln_plugin_buffer **res = calloc((size_t)p->n_results + 1, sizeof *res);
  kiln_plugin_error *err = NULL;
  if (!donor || !is_result || !temps || !res) {
    err = ocl_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (int k = 0; k < p->n_kernels; k++) donor[k] = -1;
  for (int r = 0; r < p->n_results; r++) is_result[p->result_kernel[r]] = 1;
  if (a->donated) {
    for (int i = 0; i < p->n_params; i++) {
      if (!a->donated[i]) continue;
      int dup = 0;
      for (int j = 0; j < p->n_params; j++)
        if (j != i && a->args[j] == a->args[i]) dup = 1;
      if (dup) continue;
      /* Which kernels read parameter i, and how. */
      int reader = -1, ok = 1;
      for (int k = 0; k < p->n_kernels && ok; k++)
        for (int f = 0; f < p->kernels[k].n_refs; f++) {
          const ocl_ref *rf = &p->kernels[k].refs[f];
          if (rf->kind != OCL_REF_PARAM || rf->index != i) continue;
          if (reader >= 0 || !rf->identity) ok = 0;
          reader = k;
        }
      if (!ok || reader < 0 || !is_result[reader] || donor[reader] >= 0) continue;
      const ocl_kernel_plan *kp = &p->kernels[reader];
      if (!dims_match(a->args[i], kp->dtype, kp->rank, kp->dims) || kp->n_elems == 0) continue;
      donor[reader] = i;
      ocl_log(c, KILN_PLUGIN_LOG_DEBUG, "opencl: donated argument %d becomes the output of kernel %d", i, reader);
    }
  }
  pthread_mutex_lock(&c->lock);
  for (int k = 0; k < p->n_kernels && !err; k++) {
    const ocl_kernel_plan *kp = &p->kernels[k];
    cl_int st;
    if (donor[k] >= 0) {
      temps[k] = a->args[donor[k]]->mem;
      clRetainMemObject(temps[k]);
    } else {
      temps[k] = clCreateBuffer(c->context, CL_MEM_READ_WRITE, kp->bytes ? kp->bytes : 1, NULL, &st);
      if (st != CL_SUCCESS) {
        temps[k] = NULL;
        err = ocl_cl_error("clCreateBuffer", st);
        break;
      }
    }
    if (kp->n_elems == 0) continue;
    cl_kernel kern = exe->kernels[k];
    int arg = 0;
    for (int f = 0; f < kp->n_refs && !err; f++) {
      const ocl_ref *rf = &kp->refs[f];
      cl_mem m = rf->kind == OCL_REF_PARAM ? a->args[rf->index]->mem
                 : rf->kind == OCL_REF_CONST ? exe->consts[rf->index]
                                             : temps[rf->index];
      st = clSetKernelArg(kern, (cl_uint)arg++, sizeof m, &m);
      if (st != CL_SUCCESS) err = ocl_cl_error("clSetKernelArg", st);
    }
    if (err) break;
    cl_long n = kp->n_elems;
    st = clSetKernelArg(kern, (cl_uint)arg++, sizeof temps[k], &temps[k]);
    if (st == CL_SUCCESS) st = clSetKernelArg(kern, (cl_uint)arg++, sizeof n, &n);
    if (st != CL_SUCCESS) {
      err = ocl_cl_error("clSetKernelArg", st);
      break;
    }
    size_t global = (size_t)kp->n_elems;
    if (kp->work_dim)
      st = clEnqueueNDRangeKernel(c->queue, kern, (cl_uint)kp->work_dim, NULL, kp->global, kp->local, 0, NULL, NULL);
    else
      st = clEnqueueNDRangeKernel(c->queue, kern, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (st != CL_SUCCESS) err = ocl_cl_error("clEnqueueNDRangeKernel", st);
  }
  /* Results: each temp goes to its first slot; repeated slots get copies. */
  for (int r = 0; r < p->n_results && !err; r++) {
    int k = p->result_kernel[r];
    const ocl_kernel_plan *kp = &p->kernels[k];
    cl_mem m = NULL;
    int first = 1;
    for (int q = 0; q < r; q++)
      if (p->result_kernel[q] == k) first = 0;
    if (first) {
      m = temps[k];
      clRetainMemObject(m);
    } else {
      cl_int st;
      m = clCreateBuffer(c->context, CL_MEM_READ_WRITE, kp->bytes ? kp->bytes : 1, NULL, &st);
      if (st != CL_SUCCESS) {
        err = ocl_cl_error("clCreateBuffer", st);
        break;
      }
      if (kp->bytes) st = clEnqueueCopyBuffer(c->queue, temps[k], m, 0, 0, kp->bytes, 0, NULL, NULL);
      if (st != CL_SUCCESS) {
        clReleaseMemObject(m);
        err = ocl_cl_error("clEnqueueCopyBuffer", st);
        break;
      }
    }
    err = ocl_buffer_wrap(m, kp->dtype, (size_t)kp->rank, kp->dims, &res[r]);
  }
  if (!err) {
    cl_int st = clFlush(c->queue);
    if (st != CL_SUCCESS) err = ocl_cl_error("clFlush", st);
  }
  if (err) clFinish(c->queue);
  pthread_mutex_unlock(&c->lock);
  if (!err) {
    for (int r = 0; r < p->n_results; r++) a->results[r] = res[r];
    a->n_results = (size_t)p->n_results;
  } else if (res) {
    for (int r = 0; r < p->n_results; r++)
      if (res[r]) {
        clReleaseMemObject(res[r]->mem);
        free(res[r]);
      }
  }
done:
  if (temps)
    for (int k = 0; k < p->n_kernels; k++)
      if (temps[k]) clReleaseMemObject(temps[k]);
  free(donor);
  free(is_result);
  free(temps);
  free(res);
  return err;
}
